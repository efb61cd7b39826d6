//! Unit tests of the ajv port: key order, first and composite errors,
//! what compile throws, errors as JSON.

use super::*;
use serde_json::{Map, json};

fn check(schema: Value, data: Value) -> Result<(), String> {
    let v = compile(&schema)?;
    v.validate(&data).map_err(|e| errors_text(&e))
}

#[test]
fn keys_come_in_javascript_order() {
    let m: Map<String, Value> =
        serde_json::from_str(r#"{"b":1,"10":1,"a":1,"2":1,"01":1}"#).unwrap();
    let keys: Vec<&str> = js_keys(&m).into_iter().map(String::as_str).collect();
    assert_eq!(keys, ["2", "10", "b", "a", "01"]);
}

#[test]
fn first_error_and_composite_errors_as_ajv_reports_them() {
    let person =
        json!({"type": "object", "required": ["name"], "properties": {"age": {"type": "integer"}}});
    assert_eq!(
        check(person.clone(), json!({"age": 1.5})),
        Err("data must have required property 'name'".into())
    );
    assert_eq!(
        check(person, json!({"name": "x", "age": 1.5})),
        Err("data/age must be integer".into())
    );
    assert_eq!(
        check(json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "number"}]}), json!(true)),
        Err("data must be string, data must be equal to one of the allowed values, data must be number, data must match a schema in anyOf".into())
    );
    // A tuple longer than the data skips the rest of its group.
    assert_eq!(
        check(
            json!({"items": [{"type": "string"}], "contains": {"type": "number"}}),
            json!([])
        ),
        Ok(())
    );
    // `multipleOf` through `parseInt(String(x))`.
    assert!(check(json!({"multipleOf": 1}), json!(1e22)).is_err());
    // `data[prop] !== undefined` holds for the prototype's names.
    assert_eq!(
        check(json!({"required": ["constructor"]}), json!({})),
        Ok(())
    );
}

#[test]
fn compile_throws_what_ajv_throws() {
    assert_eq!(
        check(json!({"tpye": "string"}), json!(1)),
        Err("strict mode: unknown keyword: \"tpye\"".into())
    );
    assert_eq!(
        check(json!({"format": "phone"}), json!(1)),
        Err("unknown format \"phone\" ignored in schema at path \"#\"".into())
    );
    assert_eq!(
        check(json!({"type": "strin"}), json!(1)),
        Err("schema is invalid: data/type must be equal to one of the allowed values, data/type must be array, data/type must match a schema in anyOf".into())
    );
    assert_eq!(
        check(json!({"$ref": "#/definitions/x"}), json!(1)),
        Err("can't resolve reference #/definitions/x from id #".into())
    );
}

#[test]
fn errors_serialise_as_json_stringify_writes_them() {
    let schema = json!({"properties": {"a": {"maximum": 1.0}}});
    let v = compile(&schema).unwrap();
    let errors = v.validate(&json!({"a": 2})).unwrap_err();
    assert_eq!(
        errors_json(&errors),
        r##"[{"instancePath":"/a","schemaPath":"#/properties/a/maximum","keyword":"maximum","params":{"comparison":"<=","limit":1},"message":"must be <= 1"}]"##
    );
}
