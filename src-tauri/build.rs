//! Build script: `tauri-build` turns `tauri.conf.json` and `capabilities/` into the generated
//! context (`tauri::generate_context!`) and the command permission manifest.

fn main() {
    tauri_build::build();
}
