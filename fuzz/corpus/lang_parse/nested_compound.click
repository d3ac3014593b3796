elementclass In { input -> c :: Counter -> output }
elementclass Out { input -> i :: In -> q :: Queue -> output }
Idle -> o :: Out -> Unqueue -> Discard;
