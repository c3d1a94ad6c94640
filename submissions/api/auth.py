"""Bearer-token authentication for agents and for contestants' personal API tokens."""
from ninja.security import HttpBearer

from submissions.services import accounts


class AgentAuth(HttpBearer):
    def authenticate(self, request, token):
        return accounts.agent_by_token(token)


class ContestantTokenAuth(HttpBearer):
    def authenticate(self, request, token):
        return accounts.contestant_by_token(token)
