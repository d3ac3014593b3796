define($v 3);
elementclass C { $v | input -> Queue($v) -> output }
elementclass D { input -> C($v) -> Unqueue -> output }
Idle -> D -> Discard;
