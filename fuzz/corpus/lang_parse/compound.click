elementclass Counted { input -> c :: Counter -> output }
Idle -> x :: Counted -> Discard;
