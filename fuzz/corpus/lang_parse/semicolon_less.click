Idle -> q :: Queue(10) -> Unqueue -> Discard
q2 :: Null
Idle -> q2 -> Discard
