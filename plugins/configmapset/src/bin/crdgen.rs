//! Prints the `ConfigMapSet` CustomResourceDefinition as YAML (the source of `crd.yaml`).

fn main() {
    print!("{}", configmapset::crd_yaml());
}
