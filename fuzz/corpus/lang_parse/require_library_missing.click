require(library missing.click);
Idle -> Discard;
