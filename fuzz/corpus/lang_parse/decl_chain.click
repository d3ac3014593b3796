src :: InfiniteSource(LIMIT 10, STOP true);
c :: Counter;
src -> c -> Discard;
