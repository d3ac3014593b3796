elementclass Two { [0] -> a :: Counter -> [0]; [1] -> b :: Counter -> [1] }
t :: Tee(2); w :: Two; Idle -> t; t [0] -> [0] w [0] -> Discard; t [1] -> [1] w [1] -> Discard;
