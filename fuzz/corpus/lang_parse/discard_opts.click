InfiniteSource(LENGTH 60, LIMIT 3, STOP true, TIMESTAMP false) -> Discard(ACTIVE true, BURST 4);
