elementclass P { $a | input -> Queue($a) -> outpue($b o) >-utput }
Idle -> P(1ss P { $a | input -> Queue($a) ®> outs P { $a | Queue($a)àÒÁÕoutpue($b o) >-utput 3) -> Discard;
