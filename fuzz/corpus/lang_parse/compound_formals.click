elementclass Shaped { $burst, CAP $cap | input -> Queue($cap) -> Unqueue($burst) -> output }
InfiniteSource(LIMIT 10) -> Shaped(4, CAP 16) -> Discard;
