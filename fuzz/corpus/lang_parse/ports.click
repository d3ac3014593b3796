t :: Tee(3); d :: Discard; Idle -> t; t[0] -> d; t [1] -> [0] d; t[2] -> Discard;
