//! Tool arguments. rmcp's own `Parameters` answers arguments that do not fit a tool (a wrong
//! type, a missing or unknown field) with a *successful* call result flagged `isError`: no
//! JSON-RPC code, no error kind, so a client cannot tell bad input from a failed tool. This
//! extractor has the same name (the tool macros find a tool's input schema by that name) and
//! answers such arguments like every other invalid input: JSON-RPC -32602 with
//! `data.kind = "invalid_input"` and the field in the message.

use super::mcp_error;
use crate::error::ApiError;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::schemars::{self, JsonSchema};
use rmcp::ErrorData as McpError;
use serde::de::DeserializeOwned;

/// A tool's arguments, deserialised from the call's `arguments` object.
#[derive(Debug)]
pub(super) struct Parameters<P>(pub P);

impl<P: JsonSchema> JsonSchema for Parameters<P> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        P::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        P::json_schema(generator)
    }
}

impl<S, P: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<P> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, McpError> {
        let arguments = context.arguments.take().unwrap_or_default();
        serde_json::from_value(serde_json::Value::Object(arguments))
            .map(Parameters)
            .map_err(|e| {
                mcp_error(ApiError::invalid(format!(
                    "the arguments of tool {:?} do not fit it: {e}",
                    context.name()
                )))
            })
    }
}
