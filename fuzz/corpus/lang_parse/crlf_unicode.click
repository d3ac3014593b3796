src :: InfiniteSource(DATA "héllo ☃", LIMIT 1);
src -> Discard;
