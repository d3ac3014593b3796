Idle -> { input -> Counter -> Null -> output } -> Discard;
