//! The `mnemo.toml` settings file as clap defaults.
//!
//! Precedence is flag > `MNEMO_*` variable > settings file > built-in default. The file is found
//! before the flags are parsed (`--config`, `MNEMO_CONFIG`, or `./mnemo.toml` when present), and
//! each of its values becomes the default of the argument that reads the same `MNEMO_*`
//! variable, in the root command and every subcommand. The process environment is only read,
//! never written: nothing here races with threads, and a child process sees the environment its
//! parent gave.

use crate::args::Cli;
use clap::{Command, CommandFactory, FromArgMatches};
use mnemo_server::FileConfig;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Parses the command line with the settings file's values as defaults. Errors reading or
/// validating the file are returned; clap's own errors (and `--help`) exit as clap does.
pub(crate) fn parse() -> anyhow::Result<Cli> {
    parse_from(std::env::args_os().collect(), |k| std::env::var_os(k))
}

/// [`parse`] over given arguments and environment, for tests.
fn parse_from(args: Vec<OsString>, env: impl Fn(&str) -> Option<OsString>) -> anyhow::Result<Cli> {
    let mut command = Cli::command();
    if let Some(path) = settings_path(&args, &env) {
        let file = FileConfig::load(&path)?;
        let defaults: HashMap<&str, String> = file
            .env_defaults()
            .into_iter()
            .filter(|(key, _)| env(key).is_none())
            .collect();
        command = with_defaults(command, &defaults);
    }
    let matches = command.get_matches_from(args);
    Ok(Cli::from_arg_matches(&matches)?)
}

/// The settings file named by `--config PATH`, `--config=PATH` or `MNEMO_CONFIG`, else
/// `./mnemo.toml` when it exists.
fn settings_path(args: &[OsString], env: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let from_flag = args.iter().enumerate().find_map(|(i, a)| {
        let a = a.to_str()?;
        match a.strip_prefix("--config=") {
            Some(p) => Some(PathBuf::from(p)),
            None if a == "--config" => args.get(i + 1).map(PathBuf::from),
            None => None,
        }
    });
    from_flag
        .or_else(|| env("MNEMO_CONFIG").map(PathBuf::from))
        .or_else(|| {
            Path::new("mnemo.toml")
                .exists()
                .then(|| PathBuf::from("mnemo.toml"))
        })
}

/// Sets, in `command` and all its subcommands, the default of every argument whose `env` name
/// has a value in `defaults`.
fn with_defaults(mut command: Command, defaults: &HashMap<&str, String>) -> Command {
    let ids: Vec<(String, String)> = command
        .get_arguments()
        .filter_map(|arg| {
            let name = arg.get_env()?.to_str()?;
            let value = defaults.get(name)?;
            Some((arg.get_id().to_string(), value.clone()))
        })
        .collect();
    for (id, value) in ids {
        // clap keeps defaults as `'static` text: one small string per setting, once per process.
        let value: &'static str = value.leak();
        command = command.mut_arg(id, |arg| arg.default_value(value));
    }
    let subcommands: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    for name in subcommands {
        command = command.mut_subcommand(name, |sub| with_defaults(sub, defaults));
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Command as Sub;

    fn write_settings(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("mnemo.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_file_fills_flags_the_command_line_and_environment_leave_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_settings(
            dir.path(),
            "data_dir = \"/from/file\"\n[server]\nbind = \"127.0.0.1:7001\"\nno_auth = true\n",
        );
        let path = path.to_str().unwrap();
        let none = |_: &str| None;
        let cli = parse_from(args(&["mnemo", "--config", path, "serve"]), none).unwrap();
        assert_eq!(cli.data_dir.as_deref(), Some(Path::new("/from/file")));
        let Sub::Serve(serve) = &cli.command else {
            panic!("expected serve, got {:?}", cli.command)
        };
        assert_eq!(serve.bind.to_string(), "127.0.0.1:7001");
        assert!(serve.no_auth, "a boolean from the file applies");

        // A flag wins over the file.
        let cli = parse_from(
            args(&[
                "mnemo",
                "--config",
                path,
                "--data-dir",
                "/flag",
                "serve",
                "--bind",
                "127.0.0.1:7002",
            ]),
            none,
        )
        .unwrap();
        assert_eq!(cli.data_dir.as_deref(), Some(Path::new("/flag")));
        let Sub::Serve(serve) = &cli.command else {
            panic!("expected serve")
        };
        assert_eq!(serve.bind.to_string(), "127.0.0.1:7002");

        // A variable that is set keeps the file's value out (clap then reads the variable itself;
        // tests/it/serve.rs checks that end to end with a real environment).
        let env = |k: &str| (k == "MNEMO_DATA_DIR").then(|| OsString::from("/env"));
        let cli = parse_from(args(&["mnemo", &format!("--config={path}"), "serve"]), env).unwrap();
        assert_ne!(cli.data_dir.as_deref(), Some(Path::new("/from/file")));
    }

    #[test]
    fn a_bad_settings_file_is_an_error_not_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_settings(dir.path(), "no_such_setting = 1\n");
        let err = parse_from(
            args(&["mnemo", "--config", path.to_str().unwrap(), "serve"]),
            |_| None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("no_such_setting"), "{err:#}");
    }
}
