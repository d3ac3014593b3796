// line comment
/* block
   comment */ Idle /* inline */ -> // trailing
Discard;
