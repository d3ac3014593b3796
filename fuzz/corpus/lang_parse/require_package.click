require(package "linerate");
Idle -> Discard;
