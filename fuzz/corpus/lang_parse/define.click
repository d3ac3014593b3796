define($N 10, $CAP 32);
InfiniteSource(LIMIT $N) -> Queue($CAP) -> Unqueue -> Discard;
