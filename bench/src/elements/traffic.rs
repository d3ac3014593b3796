//! Traffic for the element benchmarks: deterministic frame sets.

/// `n` distinct Ethernet/IPv4/UDP frames of `len` bytes (`len` >= 42), each
/// its own 5-tuple: `MemoryReplay`'s frames.
pub fn udp4(n: usize, len: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut f = vec![0u8; len.max(42)];
            linerate_elements::model::memoryreplay::build_frame(i as u32, &mut f);
            f
        })
        .collect()
}
