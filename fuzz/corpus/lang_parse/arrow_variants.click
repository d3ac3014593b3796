a :: Tee(2); Idle -> a; a => Discard, Discard;
b :: Tee(2); Idle->b; b[0]->[0]Discard; b [1]=> [0] Discard;
