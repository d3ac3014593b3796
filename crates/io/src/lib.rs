//! linerate-io
