InfiniteSource(DATA \<00 11 22>, LIMIT 5) -> Null -> Counter -> Discard
