elementclass MyCounter Counter;
Idle -> MyCounter -> Discard;
