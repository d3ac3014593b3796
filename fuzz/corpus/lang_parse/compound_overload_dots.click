elementclass Base { input -> Null -> output }
elementclass Base { $x | input -> Counter -> output || ... }
Idle -> Base -> Discard; Idle -> Base(1) -> Discard;
