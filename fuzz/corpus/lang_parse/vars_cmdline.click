define($X 5);
InfiniteSource(LIMIT $X, BURST ${X}) -> Counter -> Discard;
