// Tag, untag and count: a small VLAN-handling function.
$INPUT -> VLANEncap(VLAN_ID 100) -> VLANDecap -> c :: Counter -> Discard;
