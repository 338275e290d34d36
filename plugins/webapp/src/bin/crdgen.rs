//! Prints the `WebApp` CustomResourceDefinition as YAML (the source of `crd.yaml`).

fn main() {
    print!("{}", webapp::crd_yaml());
}
