InfiniteSource(LIMIT 10) -> q :: Queue -> u :: Unqueue -> Discard;
StaticThreadSched(u 0);
