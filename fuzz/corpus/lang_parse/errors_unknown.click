x :: Nonexistent(1); Idle -> x -> Discrd;
elementclass { ; -> [