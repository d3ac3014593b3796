a, b, c :: Counter; Idle -> a -> b -> c -> Discard;
