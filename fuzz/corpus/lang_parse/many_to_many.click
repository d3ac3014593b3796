t :: Tee(3); p0, p1, p2 :: Counter; Idle -> t; t [0-2] => p0, p1, p2 -> Discard;
