//! Scopes: who a memory belongs to. Validated newtypes, so an unchecked string never reaches a store.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The longest scope part we accept, in characters.
pub const MAX_SCOPE_PART_LEN: usize = 128;

fn validate_part(field: &str, raw: &str) -> Result<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if trimmed.chars().any(char::is_whitespace) {
        return Err(Error::invalid(field, "must not contain whitespace"));
    }
    // Format characters (bidi controls, zero-width joiners, the BOM) would let two ids that
    // print alike name different tenants.
    if trimmed
        .chars()
        .any(|c| c.is_control() || crate::text::is_format(c))
    {
        return Err(Error::invalid(
            field,
            "must not contain control or format characters (such as zero-width or bidi controls)",
        ));
    }
    if trimmed.chars().count() > MAX_SCOPE_PART_LEN {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_SCOPE_PART_LEN} characters"),
        ));
    }
    Ok(trimmed.to_string())
}

macro_rules! scope_part {
    ($name:ident, $field:literal) => {
        #[doc = concat!("A validated `", $field, "`.")]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn new(raw: &str) -> Result<Self> {
                validate_part($field, raw).map(Self)
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                Self::new(&raw).map_err(serde::de::Error::custom)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

scope_part!(UserId, "user_id");
scope_part!(AgentId, "agent_id");
scope_part!(RunId, "run_id");

/// Who a memory belongs to. At least one part is set. As a query, a scope matches every record
/// whose parts equal each part the scope sets (a `user_id`-only scope sees all of that user's
/// agents and runs); parts the scope leaves unset are not constrained.
///
/// Deserialising checks each part and refuses a scope with none, like [`Scope::from_parts`].
/// A scope is built only through those checks (the constructors below or deserialising) and its
/// parts are private, so a `Scope` value is valid wherever it is seen: no store checks it again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Scope {
    user_id: Option<UserId>,
    agent_id: Option<AgentId>,
    run_id: Option<RunId>,
}

// The derived (remote = "Self") forms do the field work; deserialising adds the emptiness check.
impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Scope::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let scope = Scope::deserialize(d)?;
        scope.validate().map_err(serde::de::Error::custom)?;
        Ok(scope)
    }
}

impl Scope {
    /// Builds a scope from optional raw strings; fails closed when none is given.
    pub fn from_parts(user: Option<&str>, agent: Option<&str>, run: Option<&str>) -> Result<Self> {
        let scope = Scope {
            user_id: user.map(UserId::new).transpose()?,
            agent_id: agent.map(AgentId::new).transpose()?,
            run_id: run.map(RunId::new).transpose()?,
        };
        scope.validate()?;
        Ok(scope)
    }

    pub fn user(user: &str) -> Result<Self> {
        Self::from_parts(Some(user), None, None)
    }

    /// A scope of parts already checked; fails closed when none is given.
    pub fn of(
        user_id: Option<UserId>,
        agent_id: Option<AgentId>,
        run_id: Option<RunId>,
    ) -> Result<Self> {
        let scope = Scope {
            user_id,
            agent_id,
            run_id,
        };
        scope.validate()?;
        Ok(scope)
    }

    /// The scope of a user's records across all agents and runs.
    pub fn of_user(user_id: UserId) -> Self {
        Scope {
            user_id: Some(user_id),
            agent_id: None,
            run_id: None,
        }
    }

    /// The `user_id` part, when the scope sets one.
    pub fn user_id(&self) -> Option<&UserId> {
        self.user_id.as_ref()
    }

    /// The `agent_id` part, when the scope sets one.
    pub fn agent_id(&self) -> Option<&AgentId> {
        self.agent_id.as_ref()
    }

    /// The `run_id` part, when the scope sets one.
    pub fn run_id(&self) -> Option<&RunId> {
        self.run_id.as_ref()
    }

    /// The three parts, owned.
    pub fn into_parts(self) -> (Option<UserId>, Option<AgentId>, Option<RunId>) {
        (self.user_id, self.agent_id, self.run_id)
    }

    /// A scope must name at least one of `user_id`, `agent_id`, `run_id`.
    fn validate(&self) -> Result<()> {
        if self.user_id.is_none() && self.agent_id.is_none() && self.run_id.is_none() {
            return Err(Error::invalid(
                "scope",
                "at least one of user_id, agent_id, run_id is required",
            ));
        }
        Ok(())
    }

    /// True when a record owned by `owner` is visible through this (query) scope.
    pub fn covers(&self, owner: &Scope) -> bool {
        fn part<T: PartialEq>(query: &Option<T>, owner: &Option<T>) -> bool {
            query.as_ref().is_none_or(|q| owner.as_ref() == Some(q))
        }
        part(&self.user_id, &owner.user_id)
            && part(&self.agent_id, &owner.agent_id)
            && part(&self.run_id, &owner.run_id)
    }

    /// A stable string form, used to namespace idempotency keys.
    pub fn key(&self) -> String {
        format!(
            "u={}\u{1f}a={}\u{1f}r={}",
            self.user_id.as_ref().map_or("", |v| v.as_str()),
            self.agent_id.as_ref().map_or("", |v| v.as_str()),
            self.run_id.as_ref().map_or("", |v| v.as_str()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_trimmed_and_checked() {
        assert_eq!(UserId::new("  alice ").unwrap().as_str(), "alice");
        for bad in ["", "   ", "al ice", "a\tb", "a\nb"] {
            let err = UserId::new(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert!(UserId::new(&"x".repeat(128)).is_ok());
        assert!(UserId::new(&"x".repeat(129)).is_err());
    }

    #[test]
    fn look_alike_ids_with_invisible_characters_are_refused() {
        for bad in [
            "ali\u{200B}ce",
            "alice\u{200D}",
            "\u{FEFF}alice",
            "\u{202E}ecila",
            "al\u{2066}ice\u{2069}",
            "alice\u{E0041}",
            "a\u{AD}lice",
            "a\u{0}b",
            "a\u{7F}b",
        ] {
            let err = UserId::new(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad:?}");
            assert!(
                AgentId::new(bad).is_err() && RunId::new(bad).is_err(),
                "{bad:?}"
            );
        }
        assert!(UserId::new("alïce-2_ü.x@y").is_ok());
    }

    #[test]
    fn empty_scope_fails_closed() {
        assert!(Scope::from_parts(None, None, None).is_err());
        assert!(Scope::from_parts(None, Some("bot"), None).is_ok());
        let empty = serde_json::json!({"user_id": null, "agent_id": null, "run_id": null});
        assert!(serde_json::from_value::<Scope>(empty).is_err());
        let bot = serde_json::json!({"user_id": null, "agent_id": " bot ", "run_id": null});
        let scope: Scope = serde_json::from_value(bot).unwrap();
        assert_eq!(scope, Scope::from_parts(None, Some("bot"), None).unwrap());
        assert_eq!(
            serde_json::to_value(&scope).unwrap(),
            serde_json::json!({"user_id": null, "agent_id": "bot", "run_id": null})
        );
    }

    #[test]
    fn coverage_is_per_set_part() {
        let owner = Scope::from_parts(Some("u"), Some("a"), None).unwrap();
        assert!(Scope::user("u").unwrap().covers(&owner));
        assert!(!Scope::user("v").unwrap().covers(&owner));
        assert!(!Scope::from_parts(Some("u"), Some("b"), None)
            .unwrap()
            .covers(&owner));
        assert!(!Scope::from_parts(Some("u"), None, Some("r"))
            .unwrap()
            .covers(&owner));
    }
}
