a :: Idle; a :: Discard; a -> a; b -> c;
