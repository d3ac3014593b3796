Idle -> ( input -> Counter -> Null -> output ) -> Discard;
( a :: Idle; b :: Discard; a -> b );
