//! linerate-elements
