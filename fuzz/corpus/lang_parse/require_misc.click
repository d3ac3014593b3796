require(compact_config);
provide(thing);
Idle -> Discard;
