//! Prints the `DNSRecord` CustomResourceDefinition as YAML (the source of `crd.yaml`).

fn main() {
    print!("{}", dnsrecord::crd_yaml());
}
