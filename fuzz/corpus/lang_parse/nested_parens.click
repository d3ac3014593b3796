InfiniteSource(DATA (abc), LIMIT 3, ACTIVE true) -> Discard;
