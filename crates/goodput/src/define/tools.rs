//! The catalogue of function definitions a run's requests carry (`[workload]
//! tools`, checked in [`crate::define::plan::tools`]): realistic functions with
//! JSON schemas for their parameters, each property required. The requests name
//! the ones they offer ([`offered`]) and the metrics judge each call's arguments
//! against the schema of the function it names (`measure::metrics::tool_validity`).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};

/// One function: name, description, and its parameters (name, JSON type,
/// description, an `enum` where the value is one of a few).
type Param = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
);
const CATALOGUE: [(&str, &str, &[Param]); 12] = [
    (
        "get_weather",
        "Current weather in a city",
        &[
            ("city", "string", "City name, e.g. Oslo", &[]),
            (
                "unit",
                "string",
                "Temperature unit",
                &["celsius", "fahrenheit"],
            ),
        ],
    ),
    (
        "search_flights",
        "Search flights between two airports",
        &[
            (
                "origin",
                "string",
                "IATA code of the departure airport",
                &[],
            ),
            (
                "destination",
                "string",
                "IATA code of the arrival airport",
                &[],
            ),
            ("date", "string", "Departure date, YYYY-MM-DD", &[]),
            ("passengers", "integer", "Number of passengers", &[]),
        ],
    ),
    (
        "book_hotel",
        "Book a hotel room",
        &[
            ("city", "string", "City of the hotel", &[]),
            ("check_in", "string", "Check-in date, YYYY-MM-DD", &[]),
            ("nights", "integer", "Number of nights", &[]),
        ],
    ),
    (
        "get_stock_price",
        "Latest price of a stock",
        &[("ticker", "string", "Ticker symbol, e.g. NVDA", &[])],
    ),
    (
        "send_email",
        "Send an email",
        &[
            ("to", "string", "Recipient address", &[]),
            ("subject", "string", "Subject line", &[]),
            ("body", "string", "Message text", &[]),
        ],
    ),
    (
        "create_calendar_event",
        "Add an event to the calendar",
        &[
            ("title", "string", "Event title", &[]),
            ("start", "string", "Start time, ISO 8601", &[]),
            ("duration_minutes", "integer", "Length in minutes", &[]),
        ],
    ),
    (
        "convert_currency",
        "Convert an amount between currencies",
        &[
            ("amount", "number", "Amount to convert", &[]),
            (
                "from",
                "string",
                "ISO 4217 code of the source currency",
                &[],
            ),
            ("to", "string", "ISO 4217 code of the target currency", &[]),
        ],
    ),
    (
        "search_web",
        "Search the web",
        &[
            ("query", "string", "Search terms", &[]),
            ("max_results", "integer", "Most results to return", &[]),
        ],
    ),
    (
        "get_directions",
        "Route between two places",
        &[
            ("from", "string", "Start address", &[]),
            ("to", "string", "Destination address", &[]),
            (
                "mode",
                "string",
                "Travel mode",
                &["driving", "walking", "transit"],
            ),
        ],
    ),
    (
        "translate_text",
        "Translate text",
        &[
            ("text", "string", "Text to translate", &[]),
            (
                "target_language",
                "string",
                "ISO 639-1 code of the target language",
                &[],
            ),
        ],
    ),
    (
        "lookup_order",
        "Status of a customer order",
        &[("order_id", "string", "Order number", &[])],
    ),
    (
        "set_thermostat",
        "Set a room's temperature",
        &[
            ("room", "string", "Room name", &[]),
            (
                "temperature",
                "number",
                "Target temperature in celsius",
                &[],
            ),
        ],
    ),
];

/// Most tools a request carries: the catalogue's size.
pub const MAX_TOOLS: u32 = CATALOGUE.len() as u32;

/// `count` function definitions in the OpenAI `tools` shape, chosen and ordered
/// by `seed`.
pub fn definitions(count: u32, seed: u64) -> Value {
    let mut order: Vec<usize> = (0..CATALOGUE.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x7001_5EED));
    let tools: Vec<Value> = order
        .into_iter()
        .take(count as usize)
        .map(|i| {
            let (name, description, _) = CATALOGUE[i];
            json!({"type": "function", "function": {
                "name": name,
                "description": description,
                "parameters": parameters(i),
            }})
        })
        .collect();
    Value::Array(tools)
}

/// The JSON schema of the catalogue's `i`-th function's parameters: an object
/// whose every property is required.
fn parameters(i: usize) -> Value {
    let params = CATALOGUE[i].2;
    let mut properties = serde_json::Map::new();
    for (p, ty, what, choices) in params {
        let mut schema = json!({"type": ty, "description": what});
        if !choices.is_empty() {
            schema["enum"] = json!(choices);
        }
        properties.insert((*p).into(), schema);
    }
    let required: Vec<&str> = params.iter().map(|p| p.0).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// Every function of the catalogue: its name and its parameters' JSON schema, in
/// the catalogue's order (bit `i` of [`offered`]'s mask is the `i`-th).
pub fn catalogue() -> impl Iterator<Item = (&'static str, Value)> {
    (0..CATALOGUE.len()).map(|i| (CATALOGUE[i].0, parameters(i)))
}

/// The catalogue's functions named in a `tools` list, as a mask (bit `i`: the
/// catalogue's `i`-th function); a name outside the catalogue sets no bit.
pub fn offered(tools: &Value) -> u32 {
    let names = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str));
    names
        .filter_map(|n| CATALOGUE.iter().position(|c| c.0 == n))
        .fold(0, |mask, i| mask | (1 << i))
}
