elementclass P { $a | input -> Queue($a) -> output || $a, $b | input -> Queue($a) -> Unqueue($b) -> output }
Idle -> P(10) -> Unqueue -> Discard; Idle -> P(10, 2) -> Discard;
