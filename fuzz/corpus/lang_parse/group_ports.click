t :: Tee(2); Idle -> t; t => ( [0] -> Counter -> [0]; [1] -> Null -> [1] ) => Discard, Discard;
