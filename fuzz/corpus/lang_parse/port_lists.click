t :: Tee(3); d :: Discard; Idle -> t; t [0, 2] => [0, 0] d; t [1,] => Discard;
