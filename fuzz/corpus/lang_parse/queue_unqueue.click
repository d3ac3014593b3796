InfiniteSource(LIMIT 100, BURST 8) -> q :: Queue(CAPACITY 64) -> Unqueue(BURST 4) -> c :: Counter -> Discard;
