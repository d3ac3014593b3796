//! linerate-ctl
