//! `linerate bench`: benchmarks a user can rerun on their machine.

use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum BenchCmd {
    /// The per-element table: ns per packet, Mpps, Gbps and speed-up over
    /// the reference implementation, one core, batches in memory.
    Elements {
        /// Runs per configuration (the median is reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Packets per run (some cases scale this down).
        #[arg(long, default_value_t = 5_000_000)]
        packets: u64,
        /// Write the Markdown table to this file as well.
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Only rows whose element name, configuration or description contains one of these.
        filter: Vec<String>,
    },
}

pub fn main(cmd: BenchCmd) -> i32 {
    match cmd {
        BenchCmd::Elements {
            runs,
            packets,
            markdown,
            filter,
        } => {
            let opts = linerate_bench::elements::Options {
                runs,
                packets,
                filter,
                markdown,
            };
            match linerate_bench::elements::run(&opts) {
                Ok(table) => {
                    print!("{table}");
                    0
                }
                Err(e) => {
                    eprintln!("linerate bench elements: {e}");
                    1
                }
            }
        }
    }
}
