//! `evalhost view`: its arguments; the server is `crate::view`.

use std::io::Write;

/// `evalhost view`.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// The address to listen on. Anything but a loopback address makes the
    /// results readable from the network.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free one).
    #[arg(long, default_value_t = 8737)]
    pub port: u16,
    #[command(flatten)]
    pub project: super::history::ProjectArg,
}

/// Runs the viewer until interrupted.
pub fn command(args: &ViewArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    crate::view::command(&args.project.dir(), &args.host, args.port, out, err)
}
