a, b :: Idle; c :: Discard; a, b -> Counter -> c;
t :: Tee(2); Idle -> t -> Discard, Discard;
