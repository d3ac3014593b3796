//! linerate-wire
