# 10 "other.click"
Idle -> Discard;
# 1
Idle -> q :: Queue -> Unqueue -> Discard;
