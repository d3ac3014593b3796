define($a $a$a$a$a$a$a$a$a); Idle -> Queue($a) -> Discard;
