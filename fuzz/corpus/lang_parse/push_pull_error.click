Idle -> q :: Queue -> Counter -> Discard;
InfiniteSource -> q2 :: Queue -> Tee -> Discard;
