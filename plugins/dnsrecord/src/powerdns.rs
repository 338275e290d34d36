//! The PowerDNS HTTP API, as much of it as the plugin needs: read a zone, patch its record sets. Requests go
//! through the SDK's HTTP client, so the host checks each against the plugin's `allowedOutboundHosts`.

use serde::Deserialize;
use serde_json::json;
use wasm_reconciler_sdk::Error;
use wasm_reconciler_sdk::http::{HttpError, HttpErrorKind, Request, Response};

use crate::zone::{Change, Zone};

/// The plugin's configuration (`config.yaml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// Base URL of the PowerDNS API, e.g. `http://127.0.0.1:8081`; the settings must allow it.
    pub server: String,
    /// The PowerDNS server id in API paths.
    #[serde(default = "default_server_id")]
    pub server_id: String,
    /// The variable holding the API key (`X-API-Key`).
    #[serde(default = "default_api_key_variable")]
    pub api_key_variable: String,
}

fn default_server_id() -> String {
    "localhost".into()
}

fn default_api_key_variable() -> String {
    "pdns_api_key".into()
}

/// A client of one PowerDNS server.
pub struct PowerDns {
    base: String,
    server_id: String,
    api_key: String,
}

impl std::fmt::Debug for PowerDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PowerDns")
            .field("base", &self.base)
            .field("server_id", &self.server_id)
            .finish_non_exhaustive()
    }
}

impl PowerDns {
    /// A client of the server `config` names, authenticating with `api_key`.
    pub fn new(config: &Config, api_key: String) -> Self {
        Self {
            base: config.server.trim_end_matches('/').to_owned(),
            server_id: config.server_id.clone(),
            api_key,
        }
    }

    fn zone_url(&self, zone: &str) -> String {
        format!("{}/api/v1/servers/{}/zones/{zone}", self.base, self.server_id)
    }

    /// The zone with its record sets, `None` when PowerDNS has no such zone.
    pub fn zone(&self, zone: &str) -> Result<Option<Zone>, Error> {
        let response = self.send(Request::get(self.zone_url(zone)))?;
        if response.status == 404 || response.status == 422 {
            return Ok(None);
        }
        let response = self.check(response)?;
        response
            .json()
            .map(Some)
            .map_err(|error| error.context(format!("reading zone {zone} from PowerDNS")))
    }

    /// Applies `changes` to `zone` in one request (PowerDNS applies all of them or none).
    pub fn patch(&self, zone: &str, changes: &[Change]) -> Result<(), Error> {
        let request = Request::patch(self.zone_url(zone)).json(&json!({ "rrsets": changes }))?;
        self.check(self.send(request)?)?;
        Ok(())
    }

    fn send(&self, request: Request) -> Result<Response, Error> {
        request
            .header("X-API-Key", self.api_key.clone())
            .header("Accept", "application/json")
            .send()
            .map_err(|error| self.transport_error(&error))
    }

    fn transport_error(&self, error: &HttpError) -> Error {
        let base = &self.base;
        match error.kind() {
            HttpErrorKind::Denied => Error::msg(format!(
                "the host denied the request to PowerDNS at {base}: allow it in the plugin's allowedOutboundHosts ({error})"
            )),
            HttpErrorKind::Connect | HttpErrorKind::Timeout | HttpErrorKind::Dns => {
                Error::msg(format!("PowerDNS at {base} is unreachable: {error}"))
            }
            _ => Error::msg(format!("talking to PowerDNS at {base}: {error}")),
        }
    }

    fn check(&self, response: Response) -> Result<Response, Error> {
        if response.is_success() {
            return Ok(response);
        }
        let status = response.status;
        #[derive(Deserialize)]
        struct ApiError {
            error: String,
        }
        let detail = response
            .json::<ApiError>()
            .map(|body| body.error)
            .unwrap_or_else(|_| String::from_utf8_lossy(&response.body).chars().take(200).collect());
        Err(match status {
            401 | 403 => Error::msg(format!(
                "PowerDNS at {} refused the API key ({status}): check the Secret behind the plugin's api key variable",
                self.base
            )),
            _ => Error::msg(format!("PowerDNS at {} answered {status}: {detail}", self.base)),
        })
    }
}
