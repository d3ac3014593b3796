t :: Tee(2); a, b :: Discard; Idle -> t; t [] => a, b;
