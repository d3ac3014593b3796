InfiniteSource(DATA "hello, world\n", LIMIT 1) -> Discard;
InfiniteSource(DATA 'single ( quoted )', LIMIT 1) -> Discard;
